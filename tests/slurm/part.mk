# tests/slurm/part.mk — the Slurm tier: gpupoold with the slurm executor on a
# real Slurm cluster that tests/slurm/cluster.sh starts on this host. It is
# not part of `make check` (it needs Slurm and a few minutes); `make
# test-slurm` runs it alone and `make test` (tests/all.sh) runs it last.
.PHONY: test-slurm
test-slurm: $(BUILD)/gpupoold $(BUILD)/gpupool $(BUILD)/gpupool-slurm-session
	@tests/slurm/run.sh $(BUILD) $(SLURM_TESTS)
