# Paths to real corpora. Empty = use the offline mini corpus that stage 0
# generates. Point these at your copies, e.g. NVBENCH=/data/NV-Bench.
NVBENCH=
EMILIA_NV=
NONVERBALTTS=
MNV17=
SMIIP_NV=
NVV_TRACK1_TEST=
QUALISPEECH=
VLSP2025_VC=
# Deeply Nonverbal Vocalization Dataset (OpenSLR 99; CC BY-NC-ND 4.0), read only when set,
# e.g. DEEPLY_NVV=/data/deeply_nvv (ROOT/dataset/<class>/*.wav): egs/nvv_asr_* prepare it
# (chorus-prep deeply_nvv, split by speaker), add its train speakers' clips to the mini
# corpus's NVV bank and fit the cascade's detector also on its train/dev clips spliced into
# real speech. Not an ASR training corpus (corpora=auto leaves it out).
DEEPLY_NVV=
