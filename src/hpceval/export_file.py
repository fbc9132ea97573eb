"""The export file: runs (the store's RunBundles) written to and read from JSON lines.

The export file is JSON lines, gzip-compressed when its name ends in .gz (readers look at the
content, not the name). Line 1 is the header:

    {"format": "hpceval-results", "version": 3, "runs": N, "exported": UNIX_TIME,
     "hpceval_version": "...", "source": "sqlite:///site.db"}

then one record a line: a `platform` (every portable column of the platforms table), an
`environment` and a `calibration` before the first run that uses them, and a `run`:

    {"record": "run", "platform": {"name": ..., "config_hash": ...}, "environment": FINGERPRINT,
     "calibration": UID or null, "run": {...}, "cases": [...], "executions": [...],
     "measurements": [{..., "execution": I}]}

where `execution` is the index of the measurement's execution in `executions` (or null). A
`calibration` record is the SimGrid SMPI calibration a simulated run names in its suite_config
(every column of the calibrations table but its id, the runs it was fitted on as
"source_runs": [RUN_UID, ...]); a run's "calibration" is null when it names none or its source
database did not hold it. Values are those stored: JSON has no NaN or infinities, so non-finite
floats inside JSON values appear as {"$float": "nan"}. The reader accepts only this format name
and versions 1 (no calibrations), 2 (no measurement implementation: hpceval's own) and 3,
checks every field of every record (names, types,
vocabularies, references) before anything is imported, and refuses a file that holds fewer
runs than its header announces (a truncated copy).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from hpceval import __version__
from hpceval.errors import UserError
from hpceval.store import (
    CALIBRATION_SOURCE_RUNS,
    EXECUTION_INDEX,
    InvalidBundle,
    RunBundle,
    calibration_reference,
    check_fields,
    checked_row,
    measurement_from_values,
    platform_config_hash,
)

FORMAT_NAME: Final = "hpceval-results"
# Bump whenever the records change (a column added to a bundle table, a record kind...):
# an older hpceval must refuse the file rather than misread it.
# Version 2: `calibration` records, and the run record's "calibration" (its uid or null).
FORMAT_VERSION: Final = 3
# The older versions this hpceval still reads (a version 1 file holds no calibrations, a
# version 1 or 2 file no measurement implementation: they are hpceval's own).
READABLE_VERSIONS: Final = frozenset({1, 2, FORMAT_VERSION})

_GZIP_MAGIC: Final = b"\x1f\x8b"
_HEADER_KEYS: Final = frozenset(
    {"format", "version", "runs", "exported", "hpceval_version", "source"}
)
_RUN_KEYS_V1: Final = frozenset(
    {"record", "platform", "environment", "run", "cases", "executions", "measurements"}
)
_RUN_KEYS: Final = _RUN_KEYS_V1 | {"calibration"}

# --------------------------------------------------------------------------- writing


class ExportWriter:
    """Writes an export file: header, then each run (after its platform and environment).

    The file is written beside its final name and renamed into place when the `with` block
    ends without an error; after an error nothing is left behind.
    """

    def __init__(
        self, path: Path, *, runs: int, source: str, clock: Callable[[], float] = time.time
    ):
        self.path = path
        self._runs = runs
        self._source = source
        self._clock = clock
        self._partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        self._raw: io.BufferedWriter | None = None
        self._out: io.BufferedIOBase | None = None
        self._platforms: set[tuple[str, str]] = set()
        self._environments: set[str] = set()
        self._calibrations: set[str] = set()
        self.written = 0

    def __enter__(self) -> ExportWriter:
        try:
            self._raw = self._partial.open("xb")
        except OSError as e:
            why = f"cannot write the export ({e.strerror})"
            raise UserError(why, source=str(self.path)) from None
        compress = self.path.name.lower().endswith(".gz")
        # mtime=0 and no file name: the same runs give the same bytes.
        self._out = (
            gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0)
            if compress
            else self._raw
        )
        self._line(
            {
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "runs": self._runs,
                "exported": self._clock(),
                "hpceval_version": __version__,
                "source": self._source,
            }
        )
        return self

    def write(self, bundle: RunBundle) -> None:
        platform = (str(bundle.platform["name"]), str(bundle.platform["config_hash"]))
        if platform not in self._platforms:
            self._line({"record": "platform", **bundle.platform})
            self._platforms.add(platform)
        fingerprint = str(bundle.environment["fingerprint"])
        if fingerprint not in self._environments:
            self._line({"record": "environment", **bundle.environment})
            self._environments.add(fingerprint)
        calibration: str | None = None
        if bundle.calibration is not None:
            calibration = str(bundle.calibration["uid"])
            if calibration not in self._calibrations:
                self._line({"record": "calibration", **bundle.calibration})
                self._calibrations.add(calibration)
        self._line(
            {
                "record": "run",
                "platform": {"name": platform[0], "config_hash": platform[1]},
                "environment": fingerprint,
                "calibration": calibration,
                "run": dict(bundle.run),
                "cases": [dict(case) for case in bundle.cases],
                "executions": [dict(execution) for execution in bundle.executions],
                "measurements": [dict(measurement) for measurement in bundle.measurements],
            }
        )
        self.written += 1

    def _line(self, record: Mapping[str, Any]) -> None:
        assert self._out is not None
        text = json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        self._out.write(text.encode("utf-8") + b"\n")

    def __exit__(self, exc_type: object, exc: BaseException | None, *_: object) -> None:
        assert self._raw is not None and self._out is not None
        if isinstance(exc, OSError):  # a full disk: one line, and no partial file left
            with contextlib.suppress(OSError):
                self._raw.close()
            self._partial.unlink(missing_ok=True)
            raise UserError(f"cannot write the export ({exc.strerror})", source=str(self.path))
        try:
            if self._out is not self._raw:
                self._out.close()  # writes the gzip trailer, leaves the raw file open
            if exc_type is None:
                if self.written != self._runs:
                    raise AssertionError(f"{self.written} runs written, {self._runs} announced")
                self._raw.flush()
                os.fsync(self._raw.fileno())
            self._raw.close()
            if exc_type is None:
                os.replace(self._partial, self.path)
        finally:
            self._raw.close()
            self._partial.unlink(missing_ok=True)


# --------------------------------------------------------------------------- reading


class ExportFile:
    """An export file: its header is read and checked at once, its runs on demand."""

    def __init__(self, path: Path):
        self.path = path
        with self._lines() as lines:
            first = next(lines, None)
        if first is None:
            raise self._bad(None, "empty; not an hpceval export file")
        self.header = self._header(*first)

    def check(self) -> int:
        """Read and check the whole file; the number of runs it holds."""
        return sum(1 for _ in self.bundles())

    def bundles(self) -> Iterator[RunBundle]:
        """Every run in the file, each checked completely before it is yielded."""
        platforms_seen: dict[tuple[str, str], dict[str, Any]] = {}
        environments_seen: dict[str, dict[str, Any]] = {}
        calibrations_seen: dict[str, dict[str, Any]] = {}
        version = self.header["version"]
        uids: set[str] = set()
        count = 0
        with self._lines() as lines:
            next(lines)  # the header, checked in __init__
            for number, text in lines:
                record = self._json(number, text)
                kind = record.get("record")
                try:
                    if kind == "platform":
                        platform = _platform_record(record)
                        platforms_seen[(platform["name"], platform["config_hash"])] = platform
                    elif kind == "environment":
                        environment = _environment_record(record)
                        environments_seen[environment["fingerprint"]] = environment
                    elif kind == "calibration" and version >= 2:
                        calibration = _calibration_record(record)
                        if calibration["uid"] in calibrations_seen:
                            raise InvalidBundle(f"calibration {calibration['uid']} appears twice")
                        calibrations_seen[calibration["uid"]] = calibration
                    elif kind == "run":
                        bundle = _run_record(
                            record, platforms_seen, environments_seen, calibrations_seen, version
                        )
                        if bundle.uid in uids:
                            raise InvalidBundle(f"run {bundle.uid} appears twice")
                        uids.add(bundle.uid)
                        count += 1
                        yield bundle
                    else:
                        expected = "platform, environment" + (
                            ", calibration" if version >= 2 else ""
                        )
                        raise InvalidBundle(f"unknown record {kind!r} (expected {expected} or run)")
                except InvalidBundle as exc:
                    raise self._bad(number, str(exc)) from None
        if count != self.header["runs"]:
            raise self._bad(
                None,
                f"the header announces {self.header['runs']} runs but the file holds {count}"
                " (truncated?)",
            )

    @contextlib.contextmanager
    def _lines(self) -> Iterator[Iterator[tuple[int, str]]]:
        """(line number, text) of every non-blank line, gzip or not, as UTF-8."""
        try:
            raw = self.path.open("rb")
        except OSError as exc:
            raise UserError(exc.strerror or str(exc), source=str(self.path)) from None
        with raw:
            compressed = raw.read(2) == _GZIP_MAGIC
            raw.seek(0)
            binary: io.BufferedIOBase = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw

            def numbered() -> Iterator[tuple[int, str]]:
                number = 0
                try:
                    for line in binary:
                        number += 1
                        if line.strip():
                            yield number, line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise self._bad(number, f"not UTF-8 ({exc})") from None
                except (OSError, EOFError, zlib.error) as exc:  # a damaged or cut gzip stream
                    raise self._bad(number + 1, f"unreadable ({exc})") from None

            yield numbered()

    def _header(self, number: int, text: str) -> dict[str, Any]:
        header = self._json(number, text)
        if header.get("format") != FORMAT_NAME:
            raise self._bad(
                number, f'not an hpceval export file (no "format": "{FORMAT_NAME}" header)'
            )
        version = header.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise self._bad(number, f"unknown format version {version!r}")
        if version > FORMAT_VERSION:
            raise self._bad(
                number,
                f"format version {version} is newer than this hpceval reads ({FORMAT_VERSION});"
                " upgrade hpceval",
            )
        if version not in READABLE_VERSIONS:
            raise self._bad(
                number,
                f"format version {version} is not one this hpceval reads"
                f" ({', '.join(map(str, sorted(READABLE_VERSIONS)))})",
            )
        unknown = sorted(set(header) - _HEADER_KEYS)
        missing = sorted(_HEADER_KEYS - set(header))
        if unknown or missing:
            raise self._bad(number, f"header: unknown fields {unknown}, missing fields {missing}")
        count = header["runs"]
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise self._bad(number, f"header: runs must be a count, not {count!r}")
        return header

    def _json(self, number: int, text: str) -> dict[str, Any]:
        try:
            value = json.loads(text, parse_constant=_no_constant)
        except ValueError as exc:
            raise self._bad(number, f"not JSON ({exc})") from None
        if not isinstance(value, dict):
            raise self._bad(number, "expected a JSON object")
        return value

    def _bad(self, number: int | None, message: str) -> UserError:
        return UserError(
            message, source=str(self.path), field=None if number is None else f"line {number}"
        )


def read_export(path: Path) -> list[RunBundle]:
    """Every run of an export file (checked); for tests and small files."""
    return list(ExportFile(path).bundles())


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _platform_record(record: dict[str, Any]) -> dict[str, Any]:
    platform = checked_row(
        "platforms", {k: v for k, v in record.items() if k != "record"}, "platform"
    )
    if platform_config_hash(platform["config"]) != platform["config_hash"]:
        raise InvalidBundle(f"platform {platform['name']!r}: config_hash does not match its config")
    return platform


def _environment_record(record: dict[str, Any]) -> dict[str, Any]:
    environment = checked_row(
        "environments", {k: v for k, v in record.items() if k != "record"}, "environment"
    )
    if not isinstance(environment["facts"], dict):
        raise InvalidBundle("environment.facts: expected an object")
    return environment


def _calibration_record(record: dict[str, Any]) -> dict[str, Any]:
    values = {k: v for k, v in record.items() if k != "record"}
    calibration = checked_row(
        "calibrations", values, "calibration", extra=(CALIBRATION_SOURCE_RUNS,)
    )
    if not calibration["uid"]:
        raise InvalidBundle("calibration.uid: empty")
    where = f"calibration {calibration['uid']}"
    if not isinstance(calibration["parameters"], dict):
        raise InvalidBundle(f"{where}: parameters: expected an object")
    residuals = calibration["residuals"]
    if not isinstance(residuals, list) or not all(isinstance(r, dict) for r in residuals):
        raise InvalidBundle(f"{where}: residuals: expected a list of objects")
    source_runs = calibration[CALIBRATION_SOURCE_RUNS]
    if not isinstance(source_runs, list) or not all(
        isinstance(uid, str) and uid for uid in source_runs
    ):
        raise InvalidBundle(f"{where}: {CALIBRATION_SOURCE_RUNS}: expected a list of run uids")
    return calibration


def _run_record(
    record: dict[str, Any],
    platforms_seen: Mapping[tuple[str, str], dict[str, Any]],
    environments_seen: Mapping[str, dict[str, Any]],
    calibrations_seen: Mapping[str, dict[str, Any]],
    version: int,
) -> RunBundle:
    check_fields(record, _RUN_KEYS if version >= 2 else _RUN_KEYS_V1, "run record")
    run = checked_row("runs", record["run"], "run")
    if not run["uid"]:
        raise InvalidBundle("run.uid: empty")
    where = f"run {run['uid']}"
    calibration = None
    if version >= 2 and record["calibration"] is not None:
        uid = record["calibration"]
        if not isinstance(uid, str):
            raise InvalidBundle(f"{where}: calibration: expected a calibration uid or null")
        if calibration_reference(run) != uid:
            raise InvalidBundle(
                f"{where}: calibration {uid!r} is not the one its suite_config names"
            )
        calibration = calibrations_seen.get(uid)
        if calibration is None:
            raise InvalidBundle(f"{where}: calibration {uid!r} has no record before the run")
    reference = record["platform"]
    if not isinstance(reference, dict) or set(reference) != {"name", "config_hash"}:
        raise InvalidBundle(f"{where}: platform: expected {{name, config_hash}}")
    platform = platforms_seen.get((reference["name"], reference["config_hash"]))
    if platform is None:
        raise InvalidBundle(f"{where}: platform {reference['name']!r} has no record before the run")
    environment = environments_seen.get(record["environment"])
    if environment is None:
        raise InvalidBundle(
            f"{where}: environment {record['environment']!r} has no record before it"
        )
    cases = [
        checked_row("run_cases", case, f"{where}: cases[{i}]")
        for i, case in enumerate(_list(record, "cases", where))
    ]
    case_keys = {case["case_key"] for case in cases}
    if len(case_keys) != len(cases) or len({case["ordinal"] for case in cases}) != len(cases):
        raise InvalidBundle(f"{where}: cases: a case key or ordinal repeats")
    execution_rows = []
    for i, execution in enumerate(_list(record, "executions", where)):
        checked = checked_row("executions", execution, f"{where}: executions[{i}]")
        if checked["case_key"] not in case_keys:
            raise InvalidBundle(
                f"{where}: executions[{i}]: case {checked['case_key']!r} is not planned"
            )
        execution_rows.append(checked)
    measurement_rows = []
    for i, measurement in enumerate(_list(record, "measurements", where)):
        at = f"{where}: measurements[{i}]"
        checked = checked_row("measurements", measurement, at, extra=(EXECUTION_INDEX,))
        if checked["case_key"] not in case_keys:
            raise InvalidBundle(f"{at}: case {checked['case_key']!r} is not planned")
        index = checked[EXECUTION_INDEX]
        if index is not None:
            if not _is_int(index) or not 0 <= index < len(execution_rows):
                raise InvalidBundle(
                    f"{at}.{EXECUTION_INDEX}: {index!r} is not an execution's index"
                )
            if execution_rows[index]["case_key"] != checked["case_key"]:
                raise InvalidBundle(f"{at}: its execution is of another case")
        try:
            measurement_from_values(checked)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InvalidBundle(f"{at}: {exc}") from None
        measurement_rows.append(checked)
    return RunBundle(
        platform=platform,
        environment=environment,
        run=run,
        cases=cases,
        executions=execution_rows,
        measurements=measurement_rows,
        calibration=calibration,
    )


def _list(record: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = record[key]
    if not isinstance(value, list):
        raise InvalidBundle(f"{where}: {key}: expected a list")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
