// placeholder: filled in by the measure/ work
