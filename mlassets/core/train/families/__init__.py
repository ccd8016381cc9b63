"""The model families behind ``mlassets.core.train.family``: the torch loop's (``torch_nn``) and the trees'."""
