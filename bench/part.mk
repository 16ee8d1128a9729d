# bench/part.mk — the engine's benchmark (other parts register their own
# bench programs from their part.mk files).
BENCHES += $(BUILD)/bench-engine
$(BUILD)/bench-engine: $(OBJ)/bench/bench-engine.o $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)
