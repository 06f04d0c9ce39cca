import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while Python starts: no traceback
    sys.stderr.write("\ninterrupted\n")
    sys.exit(130)

main()
