"""What the workflow's scheduler needs while planning: resources of jobs (no POT)."""
