"""perfflowaspect on weft: PerfFlowAspect's Python annotations (perfflowaspect.aspect
.critical_path and its six pointcuts, sync_event, async_event, PERFFLOW_OPTIONS) recorded by
weft, so annotated programs run unchanged: a weft trace directory (LOG-DIR/weft.data) holding
every process of the program, and PerfFlowAspect's per-process .pfw Chrome trace files.
See python/README.md, section PerfFlowAspect."""
