"""``python -m mlassets.core.train``: one training process (see ``mlassets.core.train.process``)."""

from mlassets.core.train.process import main

if __name__ == "__main__":
    main()
