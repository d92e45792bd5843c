"""Integer literals too long for Python's int(): it refuses more than sys.get_int_max_str_digits() (4300)
decimal digits with a ValueError that would otherwise read as "not an integer"."""
from __future__ import annotations


def decimal_digits(text: str) -> int:
    """How many digits `text` has where it is a decimal integer literal (a sign allowed), else 0."""
    digits = text.strip().lstrip("+-")
    return len(digits) if digits.isdigit() else 0
