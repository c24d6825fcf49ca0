"""perception_tools package."""
