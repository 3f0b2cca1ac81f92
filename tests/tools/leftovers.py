"""Processes a test left behind: those whose command line holds a marker string."""
import os


def processes_with(marker):
    """The pids (as strings) of live processes whose command line contains `marker`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(pid)
        except OSError:
            pass  # it ended while we looked
    return found
