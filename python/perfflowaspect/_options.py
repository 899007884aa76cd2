"""PERFFLOW_OPTIONS ("key=value:key=value"), read once at import, as PerfFlowAspect reads it.

Keys and defaults (PerfFlowAspect's), values case-insensitive:

    name=generic                    the component: weft's process name, when given
    log-filename-include=hostname,pid   what goes into the .pfw name: name, instance-path,
                                    hostname, pid (comma-separated, in that order of writing)
    log-dir=./                      where the .pfw goes (and weft's trace directory,
                                    LOG-DIR/weft.data, unless WEFT_OPTIONS names an output)
    log-enable=True                 False: decorated functions run as they are, nothing recorded
    cpu-mem-usage=False             True: each "around" region records its CPU time and RSS
    log-event=verbose               verbose: B/E pairs in the .pfw; compact: X events
    log-format=array                array or object: the .pfw's layout
    caliper-enable=False            accepted; weft has no Caliper bridge (True: a warning)
    weft-pfw=True                   weft's own key: False writes no .pfw (the weft trace only)

A bad value raises ValueError at import (as PerfFlowAspect does); an unknown key or an item
without '=' is one line on stderr and is ignored."""
import hashlib
import os
import sys
from urllib.parse import urlparse

_BOOL = {"true": True, "false": False}
_CHOICES = {
    "log-enable": _BOOL,
    "cpu-mem-usage": _BOOL,
    "caliper-enable": _BOOL,
    "weft-pfw": _BOOL,
    "log-event": {"verbose": "verbose", "compact": "compact"},
    "log-format": {"array": "array", "object": "object"},
}
_DEFAULTS = {
    "name": "generic", "log-filename-include": "hostname,pid", "log-dir": "./",
    "log-enable": "True", "cpu-mem-usage": "False", "log-event": "Verbose",
    "log-format": "Array", "caliper-enable": "False", "weft-pfw": "True",
}
_INCLUDES = ("name", "instance-path", "hostname", "pid")


def _warn(msg):
    print(f"perfflowaspect: {msg}", file=sys.stderr)


class Options:
    """The parsed options. `given` holds the keys the user set."""

    def __init__(self, text=None):
        raw = dict(_DEFAULTS)
        self.given = set()
        for item in (text or "").split(":"):
            if not item:
                continue
            key, eq, val = item.partition("=")
            if not eq or "=" in val:
                _warn(f"PERFFLOW_OPTIONS: ill-formed option '{item}' ignored (expected key=value)")
                continue
            if key not in _DEFAULTS:
                _warn(f"PERFFLOW_OPTIONS: unknown key '{key}' ignored; valid keys: "
                      + ", ".join(_DEFAULTS))
                continue
            raw[key] = val
            self.given.add(key)
        for key, table in _CHOICES.items():
            v = table.get(raw[key].lower())
            if v is None:
                raise ValueError(f"perfflowaspect: PERFFLOW_OPTIONS: bad value '{raw[key]}' for "
                                 f"{key}: expected " + " or ".join(k.capitalize() for k in table))
            setattr(self, key.replace("-", "_"), v)
        if not raw["log-dir"]:
            raise ValueError("perfflowaspect: PERFFLOW_OPTIONS: log-dir is empty")
        self.name = raw["name"]
        self.log_dir = raw["log-dir"]
        self.includes = []
        for inc in raw["log-filename-include"].split(","):
            if inc in _INCLUDES:
                self.includes.append(inc)
            else:
                _warn(f"PERFFLOW_OPTIONS: log-filename-include: unknown item '{inc}' ignored "
                      f"(valid: {', '.join(_INCLUDES)})")
        if self.caliper_enable:
            _warn("PERFFLOW_OPTIONS: caliper-enable=True ignored: weft has no Caliper bridge")


def instance_path():
    """The hierarchical instance path, as PerfFlowAspect derives it: the Flux job id, else an
    8-hex-digit SHA-1 of the Slurm or LSF job.step, else of the Flux URI's directory (or "1"),
    appended to an inherited PERFFLOW_INSTANCE_PATH."""
    env = os.environ
    inst = env.get("FLUX_JOB_ID")
    if inst is None:
        job = None
        if env.get("SLURM_JOB_ID") is not None:
            if env.get("SLURM_STEP_ID") is not None:
                job = env["SLURM_JOB_ID"] + "." + env["SLURM_STEP_ID"]
        elif env.get("LSB_JOBID") is not None and env.get("LS_JOBPID") is not None:
            job = env["LSB_JOBID"] + "." + env["LS_JOBPID"]
        if job is None:
            uri = env.get("FLUX_URI")
            job = "1" if uri is None else os.path.dirname(urlparse(uri).path)
        inst = hashlib.sha1(job.encode("utf-8")).hexdigest()[:8]
    parent = env.get("PERFFLOW_INSTANCE_PATH")
    return inst if parent is None else parent + "." + inst


def pfw_name(opts, inst_path, pid):
    """The .pfw file name (without directory) for process pid."""
    parts = ["perfflow", opts.log_format]
    for inc in opts.includes:
        if inc == "name":
            parts.append(opts.name)
        elif inc == "instance-path":
            parts.append("{" + inst_path + "}")
        elif inc == "hostname":
            parts.append(os.uname().nodename)
        else:
            parts.append(str(pid))
    return ".".join(parts) + ".pfw"
