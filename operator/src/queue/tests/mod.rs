mod planner;
