#!/usr/bin/env bash
# Bring this project to the newest ptscaffold template on a branch, ready for a pull request.
#
#   .github/scripts/template-update.sh OUT_DIR
#
# .github/workflows/template-update.yml runs it weekly (and by hand); it runs anywhere with git,
# ptscaffold and the project's dev extra installed, from the project's top folder. It
#   1. asks `ptscaffold check` whether a newer template is out: if not, it stops (exit 0);
#   2. applies it with `ptscaffold update` on a new branch, template-update/<version>;
#   3. runs the tests ($TEST_COMMAND), unless the update left conflict markers;
#   4. commits everything on the branch, conflicted files with their markers, pushes it to
#      origin (unless PUSH=0), and switches back to the branch it started on;
#   5. writes the pull request's title and body (the template's CHANGELOG sections, the files
#      with markers, the test result) to OUT_DIR/title.txt and OUT_DIR/body.md, and
#      update=true|false, branch, tests=passed|failed|not-run to $GITHUB_OUTPUT when it is set.
# Opening the pull request needs GitHub, so it is the workflow's last step.
# A branch of that name already on origin (an open or closed pull request) is left alone.
set -euo pipefail

out_dir=${1:?usage: template-update.sh OUT_DIR}
test_command=${TEST_COMMAND:-python -m pytest -q -p no:cacheprovider}
mkdir -p "$out_dir"

output() {
    echo "$1" >>"${GITHUB_OUTPUT:-/dev/null}"
}

summary() {  # pytest's last line, without its = rule
    tail -n 1 "$out_dir/tests.log" | sed 's/^=* *//; s/ *=*$//'
}

status=0
ptscaffold check --json >"$out_dir/check.json" || status=$?
if [ "$status" -eq 0 ]; then
    echo "The project is on the newest template; nothing to do."
    output update=false
    exit 0
elif [ "$status" -ne 4 ]; then  # 4: a newer template is out
    echo "ptscaffold check failed (exit $status)" >&2
    exit "$status"
fi
read -r old new < <(python -c 'import json, sys
found = json.load(open(sys.argv[1]))
print(found["version"], found["latest"])' "$out_dir/check.json")
branch="template-update/$new"
if git ls-remote --exit-code --heads origin "$branch" >/dev/null 2>&1; then
    echo "$branch is on origin already (its pull request is open, or was closed); nothing to do."
    output update=false
    exit 0
fi

start=$(git symbolic-ref --quiet --short HEAD || git rev-parse HEAD)
git switch --quiet --create "$branch"
ptscaffold check --changelog >"$out_dir/changelog.md" || [ $? -eq 4 ]
updated=0
ptscaffold update --no-test --quiet || updated=$?
if [ "$updated" -ne 0 ] && [ "$updated" -ne 3 ]; then  # 3: done, with conflicts
    git checkout --quiet "$start"
    git branch --quiet -D "$branch"
    echo "ptscaffold update failed (exit $updated)" >&2
    exit "$updated"
fi

# The files with conflict markers, and the template's versions of files of yours that git
# ignores (NAME.ptscaffold-new) or hunks that did not apply (.rej)
git diff --name-only --diff-filter=U >"$out_dir/conflicts.txt"
git ls-files --others -- '*.ptscaffold-new' '*.rej' >>"$out_dir/conflicts.txt"

if [ -s "$out_dir/conflicts.txt" ]; then
    tests=not-run
    tests_line="not run: the update left conflicts"
elif bash -c "$test_command" >"$out_dir/tests.log" 2>&1; then
    tests=passed
    tests_line="passed: $(summary)"
else
    tests=failed
    tests_line="FAILED: $(summary) (the log is in the workflow run)"
fi

title="Update to ptscaffold template $new (from $old)"
{
    echo "\`ptscaffold update\` from template $old to $new, made by .github/scripts/template-update.sh."
    echo
    if [ -s "$out_dir/conflicts.txt" ]; then
        echo "**Conflicts**: resolve the \`<<<<<<<\` markers (or the \`.rej\` and \`.ptscaffold-new\` files) in these, then commit on this branch:"
        echo
        sed 's/^\(.*\)$/- `\1`/' "$out_dir/conflicts.txt"
    else
        echo "The update merged without conflicts."
    fi
    echo
    echo "**Tests** (\`$test_command\`): $tests_line."
    echo
    echo "## What the template changes"
    echo
    if [ -s "$out_dir/changelog.md" ]; then
        sed 's/^#/##/' "$out_dir/changelog.md"
    else
        echo "The template's CHANGELOG says nothing about $new."
    fi
} >"$out_dir/body.md"
echo "$title" >"$out_dir/title.txt"

# The workflow's runner has no git identity of its own
if [ -z "$(git config user.email || true)" ]; then
    export GIT_AUTHOR_NAME="github-actions[bot]" GIT_COMMITTER_NAME="github-actions[bot]"
    export GIT_AUTHOR_EMAIL="41898282+github-actions[bot]@users.noreply.github.com"
    export GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
fi
git add --all
xargs -r git add --force -- <"$out_dir/conflicts.txt"
{ echo "$title"; echo; cat "$out_dir/body.md"; } >"$out_dir/commit.txt"
git commit --quiet --no-verify --file "$out_dir/commit.txt"
if [ "${PUSH:-1}" = 1 ]; then
    git push --quiet origin "$branch"
fi
git checkout --quiet "$start"

echo "$branch: $title; tests $tests"
output update=true
output "branch=$branch"
output "tests=$tests"
