"""``python -m privaudit``: the same as the ``privaudit`` command."""

from privaudit.cli import console_main

if __name__ == "__main__":
    console_main()
