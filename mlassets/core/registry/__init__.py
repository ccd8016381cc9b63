"""Stage 6, registry: every candidate becomes a model version whose tags are its record; one may be champion.

``record`` is the ``RegistryRecord`` (provenance + gate result, to and from MLflow tags); ``versions`` reads and
writes the MLflow registry; ``promote`` moves the ``champion`` alias only through the hash-chained
``promotion`` log (the truth about who was live when); ``rebuild`` retrains a version from its record alone.
"""
