"""rules-compact: declarative YAML rules that keep LLM agent conversations small."""

from .engine import Result, compact
from .engine.report import Decision, PassReport, Report
from .errors import ConfigError, InputError, Problem, RulesCompactError
from .formats import count_breakpoints
from .incremental import Compactor
from .language.loader import check_rules, load_rules, parse_rules
from .language.model import RuleSet
from .plugins.hookspecs import hookimpl

__all__ = [
    "compact", "Compactor", "load_rules", "parse_rules", "check_rules", "Result", "RuleSet", "Report", "PassReport",
    "Decision", "RulesCompactError", "ConfigError", "InputError", "Problem", "hookimpl", "count_breakpoints",
]
__version__ = "0.1.0"
