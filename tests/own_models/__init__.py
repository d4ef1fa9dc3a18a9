"""Small user-side modules that the own-model CLI tests name by import path (``own_models.relu_net:...``)."""
