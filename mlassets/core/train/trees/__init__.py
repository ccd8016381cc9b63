"""The boosted trees: the ``lightgbm`` and ``xgboost`` families, trained in one process without torch.

``gbdt`` is the two families; ``process`` their training process and tuning trial, ``fit`` the chunked loop (its
checkpoints are ``mlassets.core.train.checkpoint.trees``), ``rows`` the reader that hands each split to the library
a window of rows at a time, ``common`` what both libraries share, ``lightgbm_lib`` and ``xgboost_lib`` each library's
own part.
"""
