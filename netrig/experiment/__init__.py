"""Experiments: run the planned runs of an experiment file in labs (runner.py), with events on
a timeline and what they did (disruption.py), progress, and clean stops on a signal.

    from netrig.rig.prepare import load_experiment
    from netrig.experiment.runner import run_experiment
    from netrig.results.store import ResultStore

    with ResultStore("netrig.db") as store:
        outcome = run_experiment(load_experiment("examples/pair-iperf3.yaml"), store)
"""
