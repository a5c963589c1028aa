"""Experiments: run the planned runs of an experiment file in labs and store what they measure.

from netrig.experiment import load_experiment, run_experiment
from netrig.results import ResultStore

with ResultStore("netrig.db") as store:
    outcome = run_experiment(load_experiment("examples/pair-iperf3.yaml"), store)
    rows = store.tidy_rows(outcome.experiment_id)
"""

from netrig.experiment.runner import Outcome, Reporter, run_experiment
from netrig.model.experiment import Experiment, load_experiment

__all__ = ["Experiment", "Outcome", "Reporter", "load_experiment", "run_experiment"]
