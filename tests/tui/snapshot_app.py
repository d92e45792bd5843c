"""The app as the snapshot tests see it: matmul loaded, timings and paths hidden."""
from workbench.commands import CommandContext, default_registry
from workbench.session import Session
from workbench.tui.app import WorkbenchApp

session = Session()
ctx = CommandContext(session, default_registry(), interactive=True)
assert ctx.registry.dispatch("load examples/matmul.mlir", ctx).ok
app = WorkbenchApp(ctx, hide_volatile=True, offer_resume=False)

if __name__ == "__main__":
    app.run()
