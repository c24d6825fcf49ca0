"""Multi-turn "thinking with images" agents: trajectories, the tool loop, log-probs, rewards.

Importing this package loads nothing heavy; import the submodules (``vlagent.agent.loop`` ...).
"""
