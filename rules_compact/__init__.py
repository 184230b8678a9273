"""rules-compact: declarative YAML rules that keep LLM agent conversations small."""

from .compactor import Compactor
from .engine import Result, compact
from .errors import ConfigError, InputError, Problem, RulesCompactError
from .formats import count_breakpoints
from .hookspecs import hookimpl
from .loader import check_rules, load_rules, parse_rules
from .model import RuleSet
from .report import Decision, PassReport, Report

__all__ = [
    "compact", "Compactor", "load_rules", "parse_rules", "check_rules", "Result", "RuleSet", "Report", "PassReport",
    "Decision", "RulesCompactError", "ConfigError", "InputError", "Problem", "hookimpl", "count_breakpoints",
]
__version__ = "0.1.0"
