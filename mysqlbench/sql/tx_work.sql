/* app='holdfast',route='bench' */ SELECT SLEEP(?)
