"""``python -m privaudit``: the same as the ``privaudit`` command.

``python -m`` puts the current directory first on ``sys.path``, where a
``pandas.py`` of the directory would shadow pandas; it is taken off before
anything else is imported, as the console script has it. A command that
takes an import path puts it back, last (:mod:`privaudit._core.imports`).
"""

if __name__ == "__main__":
    from privaudit._core.imports import drop_working_directory

    drop_working_directory()

    from privaudit.cli import console_main

    console_main()
