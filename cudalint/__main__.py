"""``python -m cudalint``: the command line. A Ctrl-C before :func:`cudalint.cli.main`
installs its own handler (while Python imports the CLI) ends the process quietly with
exit 130, not with a traceback of the import."""
from __future__ import annotations

import os
import signal
import sys



def _early_interrupt(signum, frame) -> None:
    os.write(2, b"cudalint: interrupted\n")
    os._exit(130)


signal.signal(signal.SIGINT, _early_interrupt)

from cudalint.cli import main  # noqa: E402

sys.exit(main())
