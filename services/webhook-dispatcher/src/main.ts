// placeholder replaced by the dispatcher implementation
