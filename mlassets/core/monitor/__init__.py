"""Stage 7, monitor: how the world moved since the champion was trained, and how fast that costs accuracy.

``drift`` compares the rows a new data version adds with the champion's training rows (population stability
per feature, a KS test on the target, overall and per slice value) and says why in one sentence per finding;
``reference`` reads both sides from the store and the registry. ``decay`` turns the evaluation records into
the champion's metric against its age and recommends how often to retrain.
"""
