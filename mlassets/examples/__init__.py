"""Example datasets a user can generate and take through the platform with the CLI alone (``mlassets example``)."""
