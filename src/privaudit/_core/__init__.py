"""privaudit's internal kernel: what every layer shares, importing only numpy.

* :mod:`.validation`: argument checks with messages that name the argument and its range;
* :mod:`.results`: the result base class and JSON-ready serialisation;
* :mod:`.extras`: the one map from optional package to the extra that installs it;
* :mod:`.seeding`: child seeds, one idiom;
* :mod:`.files`: atomic writes and staged output directories.

Any privaudit module may import from here; nothing here imports the rest of privaudit.
"""
