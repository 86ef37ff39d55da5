"""A click group whose commands are imported when they run, not when the group is built.

``ridercrm --help`` lists every command from its name and one-line help alone; a
command's module (and with it SQLAlchemy, the settings, the features) is imported only
when that command runs or shows its own help. Loading builds the command exactly as
``Typer.add_typer`` and ``Typer.command`` would have.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer import _click as click  # typer's own copy of click, which its classes are built on
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_from_info, get_group_from_info
from typer.models import CommandInfo, TyperInfo


@dataclass(frozen=True)
class Lazy:
    """A command or group of ``ridercrm``: ``module.attribute`` is a typer.Typer (a group)
    or a function (a command); ``help`` is its first paragraph, as the listing shows it;
    ``audited`` names the group's commands that leave an audit record (cli/auditing.py)."""

    name: str
    module: str
    attribute: str
    help: str
    audited: tuple[str, ...] = ()

    def load(self, group: TyperGroup) -> click.Command:
        found = getattr(importlib.import_module(self.module), self.attribute)
        if isinstance(found, typer.Typer):
            if self.audited:
                from ridercrm.cli.auditing import audit_commands

                audit_commands(self.name, found, self.audited)
            return get_group_from_info(
                TyperInfo(found, name=self.name),
                pretty_exceptions_short=True,
                suggest_commands=group.suggest_commands,
                rich_markup_mode=group.rich_markup_mode,
            )
        return get_command_from_info(
            CommandInfo(name=self.name, callback=found),
            pretty_exceptions_short=True,
            rich_markup_mode=group.rich_markup_mode,
        )


class _NotLoaded(TyperCommand):
    """What a group's help lists for a command not loaded yet: its name and help."""

    def __init__(self, lazy: Lazy) -> None:
        super().__init__(lazy.name, help=lazy.help)
        self.lazy = lazy


class LazyGroup(TyperGroup):
    """A TyperGroup with the commands of ``lazy`` besides its own, loaded on first use."""

    lazy: ClassVar[Mapping[str, Lazy]] = {}

    def __init__(self, **attributes: Any) -> None:
        super().__init__(**attributes)
        for name, lazy in self.lazy.items():
            self.commands.setdefault(name, _NotLoaded(lazy))
        self._listing = False

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if isinstance(command, _NotLoaded) and not self._listing:
            command = self.commands[cmd_name] = command.lazy.load(self)
        return command

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # The listing needs each command's name and help only: no command is loaded.
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
