"""Stage 2, features: a data version turned into train, validation and holdout rows.

``split`` builds each partition's joined frame and splits a version by time (holdout = the newest days);
``store`` caches those frames per partition in the derived repository, so a new version computes only what is
new, and assembles a split from a version's manifest; ``preprocess`` is the fitted encoding and scaling that a
model bundles, so it can score raw rows of any version.
"""
