"""A model bundle as an MLflow model: the bundle logged as the data of a pyfunc model loaded through an installed
module (``registry/pyfunc_loader.py``) with its signature, and found again; and, for a family that has one, the
bare model with MLflow's own flavor beside it (``log_native``)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Collection
from pathlib import Path

import mlflow
import pandas as pd
import yaml
from mlflow.models import ModelSignature
from mlflow.types.schema import ColSpec, Schema

from mlassets.core.config import PipelineConfig
from mlassets.core.config.families import DEFAULT
from mlassets.core.train.artifact import BUNDLE, ModelBundle, load_bundle
from mlassets.core.train.family import family_of
from mlassets.core.train.outputs import served

# The installed module MLflow loads every model through (its ``_load_pyfunc``): it checks the folder against the
# registry, so it lives there (a name, not an import: training never imports the registry). The folder holds data.
LOADER_MODULE = "mlassets.core.registry.pyfunc_loader"
NATIVE_NAME = "native_model"  # the flavor model's name in the run, beside the bundle's ``model``


def pip_requirements(family: str = DEFAULT) -> list[str]:
    """What a logged model of ``family`` needs, pinned: the family's own list (the boosted trees'), else torch's."""
    own = getattr(family_of(family), "requirements", None)
    if own is not None:
        return list(own())
    import pandas
    import torch

    torch_version = torch.__version__.split("+")[0]
    return [f"torch=={torch_version}", f"pandas=={pandas.__version__}", f"mlflow=={mlflow.__version__}"]


def signature_of(bundle: ModelBundle, rows: pd.DataFrame, n: int = 20, int_columns: Collection[str] = (),
                 optional_columns: Collection[str] = ()) -> ModelSignature:
    """The model's input/output signature, inferred from a few raw rows and what the served model answers for them
    (a multiclass model: its label and probability columns). ``int_columns``, the config's ``dtype: int`` ones, are
    declared integers (``long``) however the rows hold them, so the pyfunc takes raw rows as the config declares
    them (MLflow refuses int64 for a ``double`` column); ``optional_columns``, the config's ``nullable`` ones, are
    declared not required (``ColSpec(required=False)``: a row may leave them out or hold nothing)."""
    sample = rows[[*bundle.preprocessor.categorical, *bundle.preprocessor.numeric]].head(n).reset_index(drop=True)
    for column in set(int_columns) & set(sample.columns):
        values = pd.to_numeric(sample[column], errors="coerce")
        if values.notna().all() and (values == values.round()).all():
            sample[column] = values.astype("int64")
    with warnings.catch_warnings():  # its hint on integer columns: the source's dtypes are fixed per column
        warnings.filterwarnings("ignore", message="Hint: Inferred schema contains integer")
        signature = mlflow.models.infer_signature(sample, served(bundle, sample))
    optional = set(optional_columns)
    if not optional or signature.inputs is None:
        return signature
    inputs = Schema([ColSpec(c.type, c.name, required=False) if c.name in optional else c
                     for c in signature.inputs.inputs])
    return ModelSignature(inputs=inputs, outputs=signature.outputs, params=signature.params)


def nullable_columns(cfg: PipelineConfig) -> list[str]:
    """The config's columns that may be missing (``nullable: true``), of the main table and of its keyed tables."""
    tables = [cfg.dataset.columns, *(t.columns for t in cfg.dataset.tables.values())]
    return sorted({name for columns in tables for name, spec in columns.items() if spec.nullable})


def log_model(bundle_dir: str | Path, rows: pd.DataFrame | None = None, name: str = "model",
              int_columns: Collection[str] = (), optional_columns: Collection[str] = ()) -> str:
    """Log a model bundle as an MLflow pyfunc model in the active run; return its model URI.

    With ``rows`` (raw feature rows) the model gets its input/output signature (``int_columns`` declared integers,
    ``optional_columns`` not required) and an input example at once.
    """
    signature = example = None
    family = str(json.loads((Path(bundle_dir) / BUNDLE).read_text()).get("family", DEFAULT))
    if rows is not None:
        bundle = load_bundle(bundle_dir)
        signature = signature_of(bundle, rows, int_columns=int_columns, optional_columns=optional_columns)
        example = rows[[*bundle.preprocessor.categorical, *bundle.preprocessor.numeric]].head(5)
        for column in set(int_columns) & set(example.columns):  # the example as the signature declares it
            if signature.inputs.input_dict()[column].type.name == "long":
                example = example.assign(**{column: pd.to_numeric(example[column]).astype("int64")})
    info = mlflow.pyfunc.log_model(
        name=name,
        loader_module=LOADER_MODULE,
        data_path=str(bundle_dir),
        pip_requirements=pip_requirements(family),
        signature=signature,
        input_example=example,
    )
    return info.model_uri


def log_native(bundle_dir: str | Path, name: str = NATIVE_NAME) -> str:
    """The bundle's model logged with its library's MLflow flavor in the active run (``mlflow.lightgbm``,
    ``mlflow.xgboost``); its model URI, or "" for a family without one. It takes the bundle's preprocessed inputs
    (category codes, then standardized numerics) and gives raw scores; the registered pyfunc model wraps it."""
    bundle = load_bundle(bundle_dir)
    log = getattr(family_of(bundle.family), "log_native", None)
    return log(bundle.model, name) if log is not None else ""


def bundle_in(root: str | Path) -> Path:
    """The bundle inside a logged model's folder: its pyfunc data (or, logged by older mlassets, its artifact)."""
    conf = (yaml.safe_load((Path(root) / "MLmodel").read_text()) or {})["flavors"]["python_function"]
    relative = conf.get("data") or conf["artifacts"]["bundle"]["path"]
    path = (Path(root) / relative).resolve()
    if not path.is_relative_to(Path(root).resolve()):
        raise ValueError(f"the MLmodel file in {root} places the bundle outside the model folder ({relative!r})")
    return path


def bundle_path(model_uri: str) -> Path:
    """Local path of the bundle inside a logged model (downloaded if the store is remote)."""
    return bundle_in(mlflow.artifacts.download_artifacts(artifact_uri=model_uri))
