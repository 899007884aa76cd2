/* plot-main.c - the weft-plot executable, which `weft plot` runs: the drawing needs cairo and
 * its libraries, which the main CLI does without. */
#include "tool/cmd.h"

int main(int argc, char **argv)
{
	weft_cli_set_oom("plot");
	return cmd_plot(argc, argv);
}
