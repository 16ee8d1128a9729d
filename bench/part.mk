# bench/part.mk — the engine's benchmark (other parts register their own
# bench programs from their part.mk files).
BENCHES += $(BUILD)/bench-engine
$(BUILD)/bench-engine: $(OBJ)/bench/bench-engine.o $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# Sessions through a real gpupoold (bench-sessions.py starts its own from
# build/, or GP_BUILD): run -it, keystroke echo, port-forward, the API beside
# 200 printing sessions, each beside its baseline.
BENCHES += bench/bench-sessions.py
bench: $(BUILD)/gpupoold $(BUILD)/gpupool

# The two-department story once per eviction mode through a real gpupoold
# (bench-reclaim-modes.py starts its own from build/, or GP_BUILD): the
# owner's wait and the borrowers' steps lost, pause against checkpoint
# against requeue.
BENCHES += bench/bench-reclaim-modes.py
