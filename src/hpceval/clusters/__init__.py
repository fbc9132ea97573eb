"""Clusters that hpceval itself starts on this machine, for trying schedulers and launchers
for real (`hpceval cluster ...`): they are what a platform runs on, not launchers."""
