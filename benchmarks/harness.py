"""Shared machinery of the benchmark harness: geometry, test data, timing, results, report.

Nothing here imports zarrdask, zarr-python or TensorStore; see ``libs.py`` for those.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

ZARRDASK = "zarrdask"
ZARR_PYTHON = "zarr-python"
TENSORSTORE = "tensorstore"
ZARRS = "zarr-python+zarrs"  # zarr-python with the zarrs Rust codec pipeline
LIBS = (ZARRDASK, ZARR_PYTHON, ZARRS, TENSORSTORE)

MiB = 1 << 20


# --------------------------------------------------------------------------- geometry


@dataclass(frozen=True)
class Geometry:
    """Shapes used by every scenario, derived from ``--size-mib``.

    At the default 512 MiB: a (128, 1024, 1024) float32 array; core chunks (4, 512, 512)
    = 4 MiB; shards (16, 512, 512) = 16 MiB holding 256 inner chunks (4, 64, 64) = 64 KiB;
    32 shards / 8192 inner chunks in all. Smaller sizes (``--smoke``) shrink the spatial
    dimensions to 256 so that several chunks still exist.
    """

    shape: tuple[int, int, int]
    chunks: tuple[int, int, int]  # core scenario: unsharded chunk shape
    shard: tuple[int, int, int]  # sharding scenarios: shard (write chunk) shape
    inner: tuple[int, int, int]  # sharding scenarios: inner (read chunk) shape
    inner_large: tuple[int, int, int]  # sharding scenario's second layout: large inner chunks
    misaligned: tuple[int, int, int]  # dask chunks that cut through shards
    window: tuple[int, int, int] = (1, 64, 64)

    @classmethod
    def from_size(cls, size_mib: int) -> "Geometry":
        if size_mib < 1:
            raise SystemExit("--size-mib must be >= 1")
        side = 1024 if size_mib >= 64 else 256
        n_elem = size_mib * MiB // 4
        t = max(n_elem // (side * side), 1)
        if t >= 16:
            t -= t % 16
        sp = min(512, side)
        mis_sp = 384 if side >= 1024 else 192  # multiples of the 64 inner chunk, not of the shard
        return cls(
            shape=(t, side, side),
            chunks=(min(4, t), sp, sp),
            shard=(min(16, t), sp, sp),
            inner=(min(4, t), 64, 64),
            inner_large=(min(4, t), sp // 2, sp // 2),
            misaligned=(min(12, t), mis_sp, mis_sp),
        )

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * 4

    def describe(self) -> str:
        return (
            f"array {self.shape} float32 = {self.nbytes / MiB:.0f} MiB; core chunks {self.chunks}; "
            f"shards {self.shard} with inner chunks {self.inner}; misaligned dask chunks "
            f"{self.misaligned}"
        )


# --------------------------------------------------------------------------- test data

_DATA_CACHE: dict[tuple, np.ndarray] = {}


def make_data(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """A deterministic climate-like float32 field (time, lat, lon).

    A smooth latitude/longitude pattern plus a seasonal cycle plus unit-variance noise,
    bit-rounded to 10 mantissa bits (as climate archives often are) so that zstd-1 has
    something realistic to compress (about 1.5-2x), unlike white noise.
    """
    key = (tuple(shape), seed)
    if key in _DATA_CACHE:
        return _DATA_CACHE[key]
    t_n, y_n, x_n = shape
    rng = np.random.default_rng(seed)
    lat = np.linspace(-1.5, 1.5, y_n, dtype=np.float32)[:, None]
    lon = np.linspace(0.0, 2 * np.pi, x_n, dtype=np.float32)[None, :]
    base = (280.0 + 20.0 * np.cos(lat) + 5.0 * np.sin(lon)).astype(np.float32)
    out = np.empty(shape, dtype=np.float32)
    for t in range(t_n):
        np.add(base, np.float32(3.0 * np.sin(2 * np.pi * t / max(t_n, 1))), out=out[t])
        out[t] += rng.standard_normal((y_n, x_n), dtype=np.float32)
    bits = out.view(np.uint32)
    bits &= np.uint32(~((1 << 13) - 1) & 0xFFFFFFFF)  # keep 10 of 23 mantissa bits
    _DATA_CACHE.clear()
    _DATA_CACHE[key] = out
    return out


def window_probe(doc: str) -> tuple[argparse.Namespace, str, list[tuple[slice, ...]]]:
    """What the probes that time a layout's 200 cold windows (``probes/``) share: their
    options (how many rounds, which layout, where the data is; ``doc``: the probe's
    docstring, its first paragraph the description), the layout's cached array and the
    window rows' 200 windows."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--layout", default="small-inner")
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parent / "data"))
    args = parser.parse_args()
    path = str(Path(args.data_dir) / "ref" / f"layout_{args.layout}.zarr")
    return args, path, random_windows(Geometry.from_size(512), 200)


def random_windows(geom: Geometry, n: int, seed: int = 1) -> list[tuple[slice, ...]]:
    """``n`` random windows of ``geom.window`` at arbitrary (not chunk-aligned) offsets.

    An unaligned 1x64x64 window touches 1 to 4 inner chunks of one or more shards.
    """
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        sel = []
        for dim, w in zip(geom.shape, geom.window):
            w = min(w, dim)
            start = int(rng.integers(0, dim - w + 1))
            sel.append(slice(start, start + w))
        out.append(tuple(sel))
    return out


# --------------------------------------------------------------------------- timing


@dataclass
class Task:
    """One library's side of a measurement.

    ``fn`` is timed; ``setup`` runs untimed before each call; ``check(result)`` returns None
    when the result is right, else a short problem text (after the first timed call, or
    after each with ``check_every``). ``fn`` may return a :class:`SelfTimed` to report its
    own figure (e.g. a median per-read latency) instead of its wall time.
    """

    fn: Callable[[], Any]
    setup: Callable[[], Any] | None = None
    check: Callable[[Any], str | None] | None = None
    check_every: bool = False
    unit: str = "s"


@dataclass
class SelfTimed:
    seconds: float
    result: Any = None
    extra: dict = field(default_factory=dict)


def _cpu_busy_s() -> float | None:
    """Seconds of CPU time all processes used since boot (from /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            parts = f.readline().split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in parts[:8])
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


def _self_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


class _Timer:
    """Wall time of a call, plus how many cores *other* processes kept busy meanwhile."""

    def __enter__(self):
        self.busy0, self.self0 = _cpu_busy_s(), _self_cpu_s()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.elapsed = time.perf_counter() - self.t0
        busy1, self1 = _cpu_busy_s(), _self_cpu_s()
        self.background = None
        if self.busy0 is not None and busy1 is not None and self.elapsed >= 0.5:  # 10 ms ticks
            self.background = max(0.0, (busy1 - self.busy0) - (self1 - self.self0)) / self.elapsed
        return False


WARMUP_KEEP_S = 10.0  # a warm-up call slower than this counts as the first repetition

# Before each timed call, wait up to IDLE_WAIT_S seconds for the machine to be quiet (other
# processes using at most IDLE_CORES cores over a short sample). 0 disables. Set by run.py.
IDLE_WAIT_S = 0.0
IDLE_CORES = 0.25
IDLE_SAMPLE_S = 0.3
idle_stats = {"calls": 0, "waited_s": 0.0, "gave_up": 0}


def wait_for_idle() -> None:
    if IDLE_WAIT_S <= 0:
        return
    idle_stats["calls"] += 1
    t_end = time.perf_counter() + IDLE_WAIT_S
    t0 = time.perf_counter()
    while True:
        b0, s0, w0 = _cpu_busy_s(), _self_cpu_s(), time.perf_counter()
        time.sleep(IDLE_SAMPLE_S)
        b1, s1, w1 = _cpu_busy_s(), _self_cpu_s(), time.perf_counter()
        if b0 is None or b1 is None:
            return
        other = max(0.0, (b1 - b0) - (s1 - s0)) / (w1 - w0)
        if other <= IDLE_CORES:
            break
        if time.perf_counter() >= t_end:
            idle_stats["gave_up"] += 1
            break
    idle_stats["waited_s"] += time.perf_counter() - t0


def measure_many(
    label: str, tasks: dict[str, Task], repeat: int, *, warmup: bool = True
) -> dict[str, Cell]:
    """Time every task ``repeat`` times, interleaved: round r runs each library once.

    Interleaving (with the order rotated each round) spreads any background load on the
    machine over all libraries instead of penalising whichever ran during it. A first
    untimed warm-up round pays one-time costs (imports, thread pools, first-touch); a
    warm-up call that takes more than WARMUP_KEEP_S seconds is kept as the first
    repetition instead of being run again. An exception makes that library's cell an
    error cell (so the table still prints) and drops it from later rounds.
    """
    cells = {lib: Cell(unit=t.unit) for lib, t in tasks.items()}
    active = list(tasks)
    t_start = time.perf_counter()
    print(f"  .. {label}:", end="", flush=True)

    def call(lib: str, timed: bool) -> None:
        task, cell = tasks[lib], cells[lib]
        try:
            if task.setup is not None:
                task.setup()
            gc.collect()
            if timed:
                wait_for_idle()
            with _Timer() as tm:
                result = task.fn()
            seconds = tm.elapsed
            if isinstance(result, SelfTimed):
                for k, v in result.extra.items():
                    cell.extra.setdefault(k, []).append(v)
                seconds, result = result.seconds, result.result
            if not timed and tm.elapsed > WARMUP_KEEP_S:
                timed = True
            if timed:
                cell.times.append(seconds)
                if tm.background is not None:
                    cell.background.append(tm.background)
            if task.check is not None and (not cell.checks or task.check_every) and timed:
                cell.checks.append(task.check(result))
            del result
        except Exception as exc:  # noqa: BLE001 - a benchmark must report, not crash
            msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            cell.error = msg
            active.remove(lib)
            print(f" [{lib} ERROR {msg}]", end="", flush=True)

    if warmup:
        for lib in list(active):
            call(lib, timed=False)
    for r in range(repeat):
        order = active[r % len(active):] + active[: r % len(active)] if active else []
        for lib in order:
            if lib in active and len(cells[lib].times) < repeat:
                call(lib, timed=True)
    print(f" ({time.perf_counter() - t_start:.0f}s)", flush=True)
    for lib, cell in cells.items():
        if cell.error:
            continue
        extra = f" [{cell.check_summary()}]" if cell.checks else ""
        bg = cell.mean_background
        bgs = f" bg {bg:.2f} cores" if bg is not None else ""
        print(
            f"       {lib:<12} median {fmt_time(cell.median, cell.unit)} "
            f"min {fmt_time(cell.min, cell.unit)}{bgs}{extra}",
            flush=True,
        )
    return cells


# --------------------------------------------------------------------------- results


@dataclass
class Cell:
    times: list[float] = field(default_factory=list)  # seconds, one per repetition
    checks: list[str | None] = field(default_factory=list)  # None = verified OK
    error: str | None = None
    unit: str = "s"  # display unit: "s" or "ms"
    note: str = ""
    background: list[float] = field(default_factory=list)  # cores other processes used, per rep
    extra: dict[str, list] = field(default_factory=dict)  # per-rep extra figures (e.g. p90)

    @property
    def mean_background(self) -> float | None:
        return sum(self.background) / len(self.background) if self.background else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None

    @property
    def min(self) -> float | None:
        return min(self.times) if self.times else None

    def check_summary(self) -> str:
        if not self.checks:
            return ""
        bad = [c for c in self.checks if c is not None]
        if not bad:
            return "ok" if len(self.checks) == 1 else f"ok {len(self.checks)}/{len(self.checks)}"
        return f"WRONG {len(bad)}/{len(self.checks)}: {bad[0]}"

    def to_json(self) -> dict:
        return {
            "times_s": self.times,
            "median_s": self.median,
            "min_s": self.min,
            "checks": self.checks,
            "check": self.check_summary() or None,
            "error": self.error,
            "note": self.note or None,
            "background_cores": self.background,
            "extra": self.extra or None,
        }


@dataclass
class Floor:
    """The least a row's work costs on this machine with no Zarr code in it (e.g. libzstd alone
    over the array's chunks), measured in the same run; ``name`` says what was timed. One floor
    may serve several rows (the rows of one array)."""

    name: str
    cell: Cell


def measure_floor(name: str, make: Callable[[], Task], repeat: int) -> Floor:
    """Time the floor task ``make()`` (built here, so that a floor that cannot be prepared, e.g. a
    layout it does not cover, gives an error cell instead of stopping the run) ``repeat`` times,
    on its own after the rows it serves (their timing is left as it was)."""
    try:
        task = make()
    except Exception as exc:  # noqa: BLE001 - a benchmark must report, not crash
        msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        print(f"  .. floor {name}: [ERROR {msg}]", flush=True)
        return Floor(name, Cell(error=msg))
    return Floor(name, measure_many(f"floor: {name}", {"floor": task}, repeat)["floor"])


@dataclass
class Row:
    case: str
    cells: dict[str, Cell]
    nbytes: int | None = None  # bytes moved, for MiB/s
    note: str = ""
    baseline: "Row | None" = None  # ratios against this row's zarrdask cell (default: own)
    floor: Floor | None = None  # the row's measured floor (render: "ratio to floor")

    def _zarrdask(self) -> Cell | None:
        base_row = self.baseline if self.baseline is not None else self
        return base_row.cells.get(ZARRDASK)

    def best_peer(self) -> tuple[str, float] | None:
        """The fastest peer library of zarrdask in this row (of LIBS) and its ratio peer / zarrdask; a
        peer whose result failed its check is not one."""
        ratios = {lib: self.ratio(lib) for lib, c in self.cells.items()
                  if lib != ZARRDASK and lib in LIBS and all(x is None for x in c.checks)}
        ratios = {lib: r for lib, r in ratios.items() if r is not None}
        if not ratios:
            return None
        lib = min(ratios, key=ratios.get)
        return lib, ratios[lib]

    def floor_ratio(self, lib: str = ZARRDASK) -> float | None:
        """``lib``'s time / the floor's (>= 1 unless the floor is not one; default zarrdask's, or
        the baseline row's zarrdask for a peer-only row)."""
        cell = self._zarrdask() if lib == ZARRDASK else self.cells.get(lib)
        f = self.floor.cell if self.floor is not None else None
        if cell is None or f is None or f.error or cell.median is None or f.median is None or f.median <= 0:
            return None
        return cell.median / f.median

    def ratio(self, lib: str) -> float | None:
        """peer time / zarrdask time (> 1 means zarrdask is faster)."""
        base_row = self.baseline if self.baseline is not None else self
        zd = base_row.cells.get(ZARRDASK)
        peer = self.cells.get(lib)
        if zd is None or peer is None or zd.median is None or peer.median is None:
            return None
        if zd.median <= 0:
            return None
        return peer.median / zd.median

    def to_json(self) -> dict:
        return {
            "case": self.case,
            "nbytes": self.nbytes,
            "note": self.note or None,
            "ratio_basis": (self.baseline.case if self.baseline is not None else None),
            "results": {lib: c.to_json() for lib, c in self.cells.items()},
            "ratios_peer_over_zarrdask": {
                lib: self.ratio(lib) for lib in self.cells if lib != ZARRDASK
            },
            "best_peer": (dict(zip(("lib", "ratio_peer_over_zarrdask"), self.best_peer()))
                          if self.best_peer() else None),
            "floor": ({"name": self.floor.name, **self.floor.cell.to_json()} if self.floor is not None else None),
            "ratios_over_floor": ({lib: self.floor_ratio(lib) for lib in self.cells}
                                  if self.floor is not None else None),
        }


@dataclass
class Scenario:
    name: str
    title: str
    columns: dict[str, str]  # lib key -> column heading (what that column measures)
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "title": self.title,
            "columns": self.columns,
            "rows": [r.to_json() for r in self.rows],
            "notes": self.notes,
            "wall_s": self.wall_s,
        }


# --------------------------------------------------------------------------- report


def fmt_time(sec: float | None, unit: str = "s") -> str:
    if sec is None:
        return "-"
    if unit == "ms":
        return f"{sec * 1e3:.2f}ms"
    if sec < 0.1:
        return f"{sec * 1e3:.1f}ms"
    return f"{sec:.3f}s"


BUSY_CORES = 0.3  # background load above this marks a cell with "!"


def _busy(cell: Cell | None) -> bool:
    return cell is not None and (cell.mean_background or 0.0) > BUSY_CORES


def _fmt_cell(cell: Cell | None) -> str:
    if cell is None:
        return "-"
    if cell.error:
        return "n/a"
    mark = "!" if _busy(cell) else ""
    return f"{fmt_time(cell.median, cell.unit)} ({fmt_time(cell.min, cell.unit)}){mark}"


def render_scenario(sc: Scenario) -> str:
    cols = [lib for lib in LIBS if lib in sc.columns]
    header = ["case"]
    for lib in cols:
        header.append(f"{lib} med (min)")
        if lib != ZARRDASK:
            header.append("ratio")
    header += ["best peer", "floor med (min)", "zd/floor"]
    header.append("check")
    floors: dict[int, tuple[str, str]] = {}  # id(floor) -> (its key in the table, its name)
    lines: list[list[str]] = []
    for row in sc.rows:
        line = [row.case]
        for lib in cols:
            line.append(_fmt_cell(row.cells.get(lib)))
            if lib != ZARRDASK:
                r = row.ratio(lib)
                line.append("-" if r is None else f"{r:.2f}x")
        best = row.best_peer()
        line.append("-" if best is None else f"{_short(best[0])} {best[1]:.2f}x")
        if row.floor is None:
            line += ["-", "-"]
        else:
            key = floors.setdefault(id(row.floor), (f"F{len(floors) + 1}", row.floor.name))[0]
            line.append(f"{_fmt_cell(row.floor.cell)} {key}")
            fr = row.floor_ratio()
            line.append("-" if fr is None else f"{fr:.2f}x")
        checks = []
        for lib in cols:
            c = row.cells.get(lib)
            if c is not None and c.checks:
                checks.append(f"{_short(lib)}:{c.check_summary()}")
        if row.floor is not None and row.floor.cell.checks:
            checks.append(f"floor:{row.floor.cell.check_summary()}")
        line.append(" ".join(checks) if checks else "")
        lines.append(line)
    widths = [max(len(h), *(len(r[i]) for r in lines)) if lines else len(h) for i, h in enumerate(header)]
    # the check column may be long: don't pad it
    out = [f"== {sc.name}: {sc.title}"]
    for lib in cols:
        out.append(f"   {lib:<12} = {sc.columns[lib]}")
    sep = "  "
    out.append(sep.join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    out.append(sep.join("-" * w for w in widths))
    for r in lines:
        out.append(sep.join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    errors = [
        (row.case, lib, c.error)
        for row in sc.rows
        for lib, c in row.cells.items()
        if c.error
    ]
    for case, lib, err in errors:
        out.append(f"   n/a  {case} / {lib}: {err}")
    for row in sc.rows:
        if row.floor is not None and row.floor.cell.error:
            out.append(f"   n/a  {row.case} / floor: {row.floor.cell.error}")
    if any(row.floor is not None for row in sc.rows):
        out.append("   best peer = the fastest peer and its time / zarrdask's; zd/floor = zarrdask's time / the "
                   "row's floor (measured in this run, no Zarr code; 1.00x = at the floor):")
    for key, name in floors.values():
        out.append(f"   {key} = {name}")
    for row in sc.rows:
        if row.note:
            out.append(f"   note {row.case}: {row.note}")
        if row.baseline is not None:
            out.append(f"   note {row.case}: ratios against zarrdask's '{row.baseline.case}'")
    if any(_busy(c) for row in sc.rows for c in row.cells.values()):
        out.append(
            f"   ! = other processes kept more than {BUSY_CORES} cores busy on average during that "
            "cell's timed runs (noisy figure)"
        )
    for n in sc.notes:
        out.append(f"   * {n}")
    out.append(f"   (scenario wall time {sc.wall_s:.0f}s)")
    return "\n".join(out)


def _short(lib: str) -> str:
    return {ZARRDASK: "zd", ZARR_PYTHON: "zp", ZARRS: "zs", TENSORSTORE: "ts"}.get(lib, lib)


# --------------------------------------------------------------------------- environment


def environment() -> dict:
    def version(dist: str) -> str | None:
        from importlib.metadata import PackageNotFoundError, version as _v

        try:
            return _v(dist)
        except PackageNotFoundError:
            return None

    commit = None
    try:
        here = Path(__file__).resolve().parent
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10
        ).stdout.strip() or None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "../zarrdask"], cwd=here, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        if commit and dirty:
            commit += "+uncommitted-zarrdask-changes"
    except Exception:  # noqa: BLE001
        pass
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "mem_total_gib": _mem_total_gib(),
        "git_commit": commit,
        "versions": {m: version(m) for m in ("zarrdask", "zarr", "tensorstore", "dask", "xarray", "numpy", "numcodecs")},
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        "page_cache": "warm: reads follow writes/earlier reads of the same files; the OS page cache is not dropped (needs root), same conditions for every library",
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
        "thp": _thp(),
    }


def _thp() -> str | None:
    """Transparent huge pages: 'enabled' and 'defrag' modes (the bracketed ones)."""
    out = []
    for name in ("enabled", "defrag"):
        try:
            with open(f"/sys/kernel/mm/transparent_hugepage/{name}") as f:
                text = f.read()
            out.append(f"{name}={text[text.index('[') + 1:text.index(']')]}")
        except (OSError, ValueError):
            pass
    return " ".join(out) or None


def _mem_total_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    return round(int(line.split()[1]) / (1 << 20), 1)
    except OSError:
        pass
    return None


def write_json(path: str, env: dict, args: dict, scenarios: list[Scenario]) -> None:
    doc = {"environment": env, "arguments": args, "scenarios": [s.to_json() for s in scenarios]}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2, default=str)


def finish(env: dict, args: Any, scenarios: list[Scenario]) -> None:
    """The end of a benchmark run: the idle wait's figures, and the JSON (``args.json``)."""
    st = idle_stats
    if st["calls"]:
        print(f"\nidle wait: {st['waited_s']:.0f}s waited before {st['calls']} timed calls; "
              f"{st['gave_up']} ran after {args.idle_wait:.0f}s without the machine getting quiet")
    env["idle_wait"] = dict(st, max_wait_s=args.idle_wait, idle_cores=IDLE_CORES)
    if args.json:
        write_json(args.json, env, vars(args), scenarios)
        print(f"\nresults written to {args.json}")


# --------------------------------------------------------------------------- files


def rmtree(path: str | os.PathLike) -> None:
    shutil.rmtree(path, ignore_errors=True)


def empty_for_write(path: str | os.PathLike) -> None:
    """A timed write's setup: ``path`` removed, then every dirty page on the machine written
    out (``os.sync``). The kernel writes a file's pages back about 30 s after they were
    written, in the middle of whichever write runs then; after this, no timed write pays
    for another's writeback (peers and floors alike)."""
    rmtree(path)
    os.sync()


def dir_size(path: str | os.PathLike) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def compare(expected: np.ndarray, got: Any) -> str | None:
    """None when ``got`` equals ``expected`` bit for bit, else how it differs."""
    got = np.asarray(got)
    if got.shape != expected.shape:
        return f"shape {got.shape} != {expected.shape}"
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype} != {expected.dtype}"
    if np.array_equal(got, expected):  # the test data holds no NaN
        return None
    bad = int(np.count_nonzero(got != expected))
    return f"{bad} of {expected.size} elements differ ({100.0 * bad / expected.size:.2f}%)"
