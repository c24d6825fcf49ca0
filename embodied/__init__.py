"""Embodied (MuJoCo robot) environments. Empty until its issue lands; see DESIGN.md section 2."""
