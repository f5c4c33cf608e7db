"""The metric files trainers leave beside their checkpoints: Hugging Face `trainer_state.json`,
Lightning's `metrics.csv`, an MLflow file store's run folders (and their experiments'
`meta.yaml`), TensorBoard event files. Each becomes `metrics` rows in long form under canonical
keys (naming.py), with the run named by the file's own run or its folder.

Importing this package registers each format, in this order (a tie goes to the first).
"""

# isort: off
from . import (  # noqa: F401  (importing registers each format)
    trainer_state,
    lightning_csv,
    mlflow_store,
    tensorboard_events,
)
# isort: on
