"""Campaigns: suite x platform -> cases -> executions -> measurements in the store.

- `configs`: suite and platform files loaded with every name they hold validated;
- `prepare`: toolchain, launcher, builds and provenance before anything is written; new and
  resumed runs;
- `run`: planning cases and executing them, every completed point committed at once.

Used by the CLI (`hpceval run`) and by `hpceval simulate` (hpceval.simulate).
"""

from hpceval.campaign.configs import load_platform, load_suite, suite_from_raw, with_sources
from hpceval.campaign.prepare import (
    Prepared,
    prepare_resume,
    prepare_run,
    start_new_run,
    toolchain_and_launcher,
)
from hpceval.campaign.run import (
    Campaign,
    CampaignResult,
    CaseOutcome,
    Interrupted,
    Reporter,
    SilentReporter,
    case_description,
    case_from_description,
    plan_cases,
    skipped_benchmarks,
)

__all__ = [
    "Campaign",
    "CampaignResult",
    "CaseOutcome",
    "Interrupted",
    "Prepared",
    "Reporter",
    "SilentReporter",
    "case_description",
    "case_from_description",
    "load_platform",
    "load_suite",
    "plan_cases",
    "prepare_resume",
    "prepare_run",
    "skipped_benchmarks",
    "start_new_run",
    "suite_from_raw",
    "toolchain_and_launcher",
    "with_sources",
]
