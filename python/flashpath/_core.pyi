"""Types of the Rust core's Python binding (crates/flashpath-py)."""

__version__: str

class FlashpathError(Exception):
    """Bad input: args are (message, file, line or None, what is wrong)."""

class LogFile:
    """A log a job asked for."""

    @property
    def name(self) -> str: ...
    @property
    def contents(self) -> str: ...
    @property
    def option(self) -> str: ...
    @property
    def append(self) -> bool: ...

class JobRun:
    """One fio run."""

    @property
    def text(self) -> str: ...
    @property
    def json_text(self) -> str: ...
    @property
    def events(self) -> int: ...
    @property
    def completed_ios(self) -> int: ...
    @property
    def notes(self) -> list[str]: ...
    @property
    def logs(self) -> list[LogFile]: ...

class IozoneRun:
    """One iozone run."""

    @property
    def text(self) -> str: ...
    @property
    def json_text(self) -> str: ...
    @property
    def events(self) -> int: ...
    @property
    def completed_ios(self) -> int: ...

class DdRun:
    """One dd run: what dd prints on stderr."""

    @property
    def text(self) -> str: ...
    @property
    def events(self) -> int: ...
    @property
    def completed_ios(self) -> int: ...

def run_job(
    job: str,
    device: str,
    overrides: list[str] = ...,
    seed: int = 0,
    output_format: str = "normal",
) -> JobRun: ...
def run_job_text(
    text: str,
    name: str,
    base_dir: str,
    device: str,
    overrides: list[str] = ...,
    seed: int = 0,
    output_format: str = "normal",
) -> JobRun: ...
def run_trace_text(
    text: str,
    name: str,
    base_dir: str,
    device: str,
    overrides: list[str],
    seed: int,
    output_format: str,
    trace_format: str | None = None,
    columns: str | None = None,
    trace_device: str | None = None,
    remap: str | None = None,
    absolute: bool = False,
    lat_csv: str | None = None,
    recorded_depth: bool = False,
    replay_delay: str | None = None,
    per_cpu: str | None = None,
) -> JobRun: ...
def run_iozone(
    args: list[str], device: str, overrides: list[str] = ..., seed: int = 0
) -> IozoneRun: ...
def run_dd(
    operands: list[str], device: str, overrides: list[str] = ..., seed: int = 0
) -> DdRun: ...
def dd_job(operands: list[str]) -> str: ...
def parse_only(
    job: str,
    device: str,
    overrides: list[str] = ...,
    text: str | None = ...,
    base_dir: str | None = ...,
) -> list[str]: ...
def job_writers(
    job: str,
    device: str,
    overrides: list[str] = ...,
    text: str | None = ...,
    base_dir: str | None = ...,
) -> list[tuple[str, int]]: ...
def profiles() -> list[str]: ...
def profile_description(name: str) -> str: ...
def profile_show(name: str, overrides: list[str] = ...) -> str: ...
def write_profile(
    name: str,
    description: str,
    include: list[str],
    params: list[tuple[str, bool | int | float | str | list[object], str, str]],
    comments: list[str] = ...,
) -> str: ...
def scenario_files() -> list[tuple[str, str]]: ...
def build_profile() -> str: ...
def ftl_wa_table(
    blocks: int = ..., pages: int = ..., warm: float = ..., measure: float = ..., seed: int = ...
) -> list[dict[str, float]]: ...
