"""Word lists of the synthetic screens: icon names, widget labels and chrome text.

Plain tuples of strings (no PIL), so :mod:`sim.screens.level` can validate against them.
"""

from __future__ import annotations

SHAPES: tuple[str, ...] = ("rectangle", "circle", "triangle", "diamond")
"""Outlines a ``shape`` element can have; instructions use these words."""

ICON_NAMES: tuple[str, ...] = (
    "search",
    "gear",
    "heart",
    "star",
    "home",
    "trash",
    "bell",
    "plus",
    "close",
    "menu",
    "back",
    "user",
    "mail",
    "folder",
    "check",
    "play",
)
"""Pictograms :mod:`sim.screens.icons` can draw; an icon element's label is its name."""

TEXT_LABELS: tuple[str, ...] = (
    "OK",
    "Cancel",
    "Save",
    "Submit",
    "Settings",
    "Next",
    "Share",
    "Delete",
    "Log in",
    "Sign up",
    "Send",
    "Edit",
    "Done",
    "Continue",
    "Open",
    "Help",
    "Upload",
    "Download",
    "Refresh",
    "Apply",
    "Profile",
    "Messages",
    "Photos",
    "Music",
    "Maps",
    "Calendar",
    "Contacts",
    "Notes",
    "Weather",
    "Camera",
    "Wallet",
    "Files",
    "Clock",
    "News",
    "Library",
    "Explore",
    "Favorites",
    "History",
    "Account",
    "Privacy",
    "Storage",
    "Display",
    "Language",
    "About",
    "Backup",
    "Reports",
    "Projects",
    "Archive",
)
"""Labels of buttons, list rows, tabs and menu items."""

TOGGLE_LABELS: tuple[str, ...] = (
    "Wi-Fi",
    "Bluetooth",
    "Airplane mode",
    "Dark mode",
    "Notifications",
    "Location",
    "Auto-rotate",
    "Do not disturb",
    "Hotspot",
    "NFC",
    "Battery saver",
    "Auto sync",
    "Sound",
    "Vibration",
    "Night light",
    "Auto update",
)
"""Text next to a ``toggle`` switch."""

FIELD_LABELS: tuple[str, ...] = (
    "Search",
    "Email",
    "Password",
    "Username",
    "Full name",
    "Phone",
    "Address",
    "Message",
    "City",
    "Comment",
    "Website",
    "Company",
)
"""Placeholder text of a ``text_field``."""

WINDOW_TITLES: tuple[str, ...] = (
    "Untitled - Editor",
    "Preferences",
    "Project Manager",
    "Photo Viewer",
    "Spreadsheet",
    "Mail Client",
)
"""Desktop title-bar text (chrome, not an element)."""

APP_TITLES: tuple[str, ...] = ("Control Center", "My App", "Inbox", "Dashboard", "Store", "Setup")
"""Phone app-bar text (chrome, not an element)."""
