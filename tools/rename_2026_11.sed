# rename_2026_11.sed: the parrnn renames of 2026-11-28 (CHANGELOG.md).
# Migrates code that uses parrnn's API; idempotent (a second run changes
# nothing). Usage (GNU sed):
#     sed -E -i -f tools/rename_2026_11.sed file.c ...
# It does the pure renames only; the signature and type changes the
# CHANGELOG lists (prn_eigenvalues' n, prn_scyfi_result's counts) need a
# look at each call.

# lifetimes: every object ends with _free, every constructor ends in _create
s/\bprn_context_destroy\b/prn_context_free/g
s/\bprn_optim_sgd\b/prn_optim_sgd_create/g
s/\bprn_optim_adam\b/prn_optim_adam_create/g

# "cell" means prn_cell only: DEER's user function is a system ...
s/\bprn_deer_cell\b/prn_deer_system/g
s/\bprn__deer_rnn_cell\b/prn__deer_rnn_system/g
# ... and the fused backend slots of one step of the gates are rnn_gates_*
# (the slot, PRN_SLOT_DECL_/PRN_SLOT_ names and every backend's function)
s/\b([A-Za-z0-9_]*)rnn_cell_(forward|backward)\b/\1rnn_gates_\2/g
s/\brnn_cell_\*/rnn_gates_*/g
s/\bprn_backend_rnn_cell_check\b/prn_backend_rnn_gates_check/g
s/\bprn__cell_saved\b/prn__gates_saved/g
s/\bt_rnn_cell\b/t_rnn_gates/g
