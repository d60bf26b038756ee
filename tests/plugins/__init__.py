"""Extensions written as a team would write them outside ragassay, loaded through RAGASSAY_PLUGINS."""
