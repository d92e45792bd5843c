"""An Input whose editing keys act in the order they were typed.

Textual (8.2) runs a focused Input's key bindings (backspace, delete, left, right, home, end, ...) only
once the key event has bubbled up from the Input, a message later; a printable key already queued
behind it is inserted first. Keys that arrive together, typed while the screen is busy repainting,
pasted by a terminal or sent by tmux, were edited out of order: `hix`, Backspace, `y` gave `hix` (the
Backspace deleted the `y`), and `32`, Left, `1` gave `321`. Here the Input's own bindings run when the
key arrives, before the next key is read."""
from __future__ import annotations

from textual import events
from textual.widgets import Input


def _editing_actions(cls) -> frozenset[str]:
    """The actions of the bindings that Input and its subclasses declare (not the scrolling bindings an
    Input inherits, `down` among them, which its container's bindings take: the parameter form's next
    field)."""
    actions = set()
    for klass in cls.__mro__:
        for binding in klass.__dict__.get("BINDINGS", ()):
            actions.add(binding.action if hasattr(binding, "action") else binding[1])
        if klass is Input:
            break
    return frozenset(actions)


class OrderedInput(Input):
    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        cls._editing = _editing_actions(cls)

    async def _on_key(self, event: events.Key) -> None:
        if not event.is_printable:
            # the bindings of this key as they stand (a keymap file may have remapped them)
            for binding in self._bindings.key_to_bindings.get(event.key, ()):
                if binding.action in self._editing:
                    event.stop()
                    event.prevent_default()
                    await self.run_action(binding.action)
                    return
        await super()._on_key(event)


OrderedInput._editing = _editing_actions(OrderedInput)
