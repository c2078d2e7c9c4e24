"""Staleness thresholds as policy data: read from the bundle's policies/data.json.

`capgate.thresholds.staleness` holds the material-change limits (`length_quantile_change`,
`peak_rate_growth`, `burstiness_growth`) and `capgate.thresholds.evidence_max_age_days`
the maximum age; an absent key keeps the dataclass default, so the thresholds are
versioned with the bundle and never silently missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from registry.errors import Unavailable
from registry.staleness.rules import StalenessThresholds

_STALENESS_KEYS = (
    "length_quantile_change",
    "peak_rate_growth",
    "burstiness_growth",
    "prefix_cache_share_change",
    "cancellation_rate_change",
    "length_correlation_change",
)


def data_path() -> Path:
    import policies

    return Path(policies.__file__).parent / "data.json"


def thresholds_from(data: Any) -> StalenessThresholds:
    """The thresholds found in a decoded data document (defaults for what is absent)."""
    section = data.get("capgate", {}).get("thresholds", {}) if isinstance(data, dict) else {}
    values: dict[str, Any] = {}
    staleness = section.get("staleness") if isinstance(section, dict) else None
    if isinstance(staleness, dict):
        values.update({key: staleness[key] for key in _STALENESS_KEYS if key in staleness})
    if isinstance(section, dict) and "evidence_max_age_days" in section:
        values["max_evidence_age_days"] = section["evidence_max_age_days"]
    if isinstance(section, dict) and "waiver_max_lifetime_days" in section:
        values["waiver_max_lifetime_days"] = section["waiver_max_lifetime_days"]
    return StalenessThresholds.model_validate(values)


def load_thresholds(path: Path | None = None) -> StalenessThresholds:
    """The staleness thresholds of the installed policy bundle."""
    source = path or data_path()
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return StalenessThresholds()
    except (OSError, ValueError) as exc:
        raise Unavailable(f"cannot read the policy data {source}: {exc}") from None
    try:
        return thresholds_from(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise Unavailable(
            f"invalid staleness threshold in {source}: {first['loc'][0]}: {first['msg']}"
        ) from None
