"""Word lists of the ``hires`` layout: ribbon-button labels and texture-glyph patterns.

Plain tuples of strings (no PIL), so :mod:`sim.screens.level` can use them in its presets.
"""

from __future__ import annotations

HIRES_LABELS: tuple[str, ...] = (
    "Export", "Import", "Rename", "Archive", "Refresh", "Publish", "Compare", "Convert",
    "Connect", "Collapse", "Compress", "Extract", "Encrypt", "Decrypt", "Preview", "Restore",
    "Resize", "Rotate", "Mirror", "Filter", "Sort", "Group", "Ungroup", "Merge", "Split",
    "Align", "Center", "Justify", "Indent", "Outdent", "Bullets", "Numbering", "Borders",
    "Shading", "Spacing", "Margins", "Columns", "Breaks", "Headers", "Footers", "Symbols",
    "Equation", "Caption", "Bookmark", "Comment", "Compile", "Deploy", "Debug", "Profile",
    "Inspect", "Monitor", "Migrate", "Rebase", "Commit", "Revert", "Stash", "Branch",
    "Checkout", "Tag", "Release", "Pin", "Unpin", "Lock", "Unlock", "Mute", "Unmute",
    "Record", "Pause", "Resume", "Rewind", "Forward", "Shuffle", "Repeat", "Queue", "Invite",
    "Assign", "Approve", "Reject", "Escalate", "Snooze", "Dismiss", "Flag", "Unflag", "Label",
    "Move", "Copy", "Paste", "Cut", "Undo", "Redo", "Clear", "Reset", "Sync", "Scan", "Print",
    "Attach", "Detach", "Embed", "Link", "Unlink", "Crop", "Trim", "Blur", "Sharpen",
    "Enhance", "Invert", "Tint", "Fade", "Zoom", "Pan", "Measure", "Annotate", "Highlight",
    "Stamp", "Sign", "Verify", "Validate", "Schedule", "Remind", "Notify", "Subscribe",
    "Follow", "Unfollow", "Block", "Report", "Pinboard", "Gallery", "Timeline", "Sidebar",
    "Toolbar", "Ruler", "Gridlines", "Outline", "Preset", "Macro", "Script", "Plugin",
    "Theme", "Palette", "Gradient", "Texture", "Layer", "Mask", "Channel", "Histogram",
    "Curves", "Levels", "Exposure", "Contrast", "Balance", "Vibrance", "Noise", "Grain",
    "Vignette", "Distort", "Warp", "Skew", "Flatten", "Rasterize", "Vectorize", "Trace",
)  # fmt: skip
"""Labels of ``hires`` ribbon buttons: 160 distinct action words, none of them chrome text."""

GLYPH_PATTERNS: tuple[str, ...] = ("lined", "barred", "checkered", "hatched")
"""Textures of ``hires`` glyph tiles. Each inks exactly half of an even-sided tile with a period
of at most 4 px, so any downscale by 3x or more averages them to the same flat colour."""
