"""Diagnosis of training and serving from what was recorded: verdicts, stragglers, scaling cost, capacity.

Pure functions over telemetry, traces and plain inputs; the dashboard and ``mlassets diagnose`` call them.
"""
