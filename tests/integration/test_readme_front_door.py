"""The README's front-door example runs as printed, and prints what its comment says."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_front_door_example_prints_what_its_comment_says(broker_url):
    section = README.read_text().split("## From a script: the package's front door", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    promised = re.search(r"print\(.*\)\s+# (\S+ \S+):", code).group(1)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "A2A_BROKER_URL": broker_url})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == promised
