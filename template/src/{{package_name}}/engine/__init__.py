"""The machinery that trains, checkpoints and records a run: the loop (loop.py), one optimizer
step (step.py), evaluation (validate.py), checkpoints and resume, the EMA and the recorder.

A project's own code lives outside this folder (model.py, loss.py, optim.py, task_config.py and
data/datasets.py) and enters through named functions; nothing here names the example model or
dataset, so the folder can stay closed while the rest is made yours.
"""
