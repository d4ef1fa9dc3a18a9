"""Collectors that turn a training run into observation arrays, shared by the audits, ``testing`` and the integrations.

* :mod:`.gradient`: gradient canaries on audit coordinates, in-versus-out observations per step (Tight Auditing Algorithm 2);
* :mod:`.inputs`: input-space canaries, observed through the model's per-example gradients;
* :mod:`.one_run`: gradient canaries kept in or out for a whole training run, one summed observation each (the one-run audit).
"""
