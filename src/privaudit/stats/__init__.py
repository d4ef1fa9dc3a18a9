"""privaudit's statistical core: numpy, scipy and dp_accounting only, never a model.

Every function takes plain arrays of scores, losses or cosines and returns a
frozen result object (or a float). Higher scores mean "more likely a member";
exposure functions take losses, where lower means more memorised. The public
names are re-exported lazily from :mod:`privaudit`.
"""
