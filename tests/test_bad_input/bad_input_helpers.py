"""Helpers of the bad-input battery (imported by name: pytest puts this folder on sys.path)."""
import hashlib
from pathlib import Path

TRAIN = ["train", "--task", "reverse", "--max-len", "5", "--n-train", "60", "--n-val", "8", "--n-test", "8",
         "--preset", "tiny", "--max-steps", "4", "--device", "cpu", "--threads", "1", "--no-progress"]


def fingerprint(folder: Path) -> dict[str, str]:
    """{relative path: sha256} of every file under `folder` (hidden temporary files included)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}
