"""``python -m mlassets.core.train``: one training process (see ``mlassets.core.train.entry``)."""

from mlassets.core.train.entry import main

if __name__ == "__main__":
    main()
