"""``python -m privaudit``: the same as the ``privaudit`` command."""

from privaudit.cli import main

if __name__ == "__main__":
    main()
