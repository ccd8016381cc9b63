"""Stage 4, tune: an Optuna study over training hyperparameters, scored on the validation split only.

``space`` is what a study searches and how values enter a config; ``study`` runs the trials through the
training loop (TPE sampler, a median pruner fed each epoch, every trial an MLflow nested run, the study kept
in an RDB storage so it resumes); ``record`` is the ``TunedHparams`` it hands on; ``apply`` gives training the
newest tuned values unless the config pins them.
"""
